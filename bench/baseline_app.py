"""A Streamlit page with no figures, as a yardstick for bench/load_test.py: what the framework and
the browsers cost on this machine before any of the app's own work.

It has what the load test drives (the sidebar's "Sentence (…)" text area, the sentence mirrored in
the URL as ?s=, and the default page's title, which the test waits for after loading a page) and
nothing else: no model, no figures. Run it in place of the app:

    .venv/bin/streamlit run bench/baseline_app.py --server.port 8601 --server.headless true
    .venv/bin/python bench/load_test.py --port 8601 --pages overview --sessions 20 --minutes 5 \\
        --interval 5

With ``-- --chart`` it also draws one small plotly chart, so that the browser loads plotly.js as the
app's first page does (bench/floors.py times both): three points while the text area is empty, then
a bar per word of the sentence, so that a new sentence is a new figure, built, sent and drawn, as on
the app's pages.
"""

import sys

import streamlit as st

with st.sidebar:
    sentence = st.text_area("Sentence (de)", key="sentence", height=80)
# the title of the app's default page: the load test waits for it
st.title("Overview & translation")
if "--chart" in sys.argv[1:]:
    import plotly.graph_objects as go

    words = sentence.split()
    st.plotly_chart(go.Figure(go.Bar(x=list(range(len(words))), y=[len(w) for w in words])) if words
                    else go.Figure(go.Scatter(x=[1, 2, 3], y=[1, 3, 2])))
st.text(sentence)
st.query_params["s"] = sentence
