"""transformer-viz: `streamlit run app.py`. The router (transformer_viz/app/router.py) sets up the
navigation and the shared sidebar; every page lives in transformer_viz/app/pages/."""

from transformer_viz.app.router import main

main()
