"""The app's entry script inside the package: ``transformer-viz app`` runs ``streamlit run`` on this
file, so that an installed package starts from any directory. The repository's app.py does the
same."""

from transformer_viz.app.router import main

main()
