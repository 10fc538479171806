"""transformer-viz: the navigation and the shared sidebar; every page lives in transformer_viz/app/pages/."""

import streamlit as st

from transformer_viz.app import webapp
from transformer_viz.app.navigation import DEFAULT_PAGE, PAGES

st.set_page_config(page_title="transformer-viz", page_icon="🔎", layout="wide")
webapp.page_style()

# expanded: every page listed (Streamlit folds a list of more than 12 behind "View more" otherwise).
page = st.navigation([st.Page(p.file, title=p.title, url_path=p.url_path, default=p == DEFAULT_PAGE) for p in PAGES],
                     expanded=True)
with webapp.logged_run(page.title):  # a no-op unless TRANSFORMER_VIZ_RUN_LOG names a file
    webapp.open_page(page.title, webapp.sidebar())
    with st.sidebar:  # before the page, which may st.stop()
        webapp.rerun_after_reconnect()  # a session whose process died comes back on another (docs/deployment.md §4)
    page.run()
