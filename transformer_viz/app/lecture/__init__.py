"""What the Lecture page (transformer_viz/app/pages/lecture.py) needs of the app besides the lecture
itself, which is data in transformer_viz/views/lecture/: the clicker's keys and the projector's CSS
(browser.py), and the button that downloads the lecture as one HTML file (download.py)."""
