"""Tokens & embeddings (to be built)."""

import streamlit as st

from transformer_viz import webapp

sel = webapp.require_selection()
st.title("Tokens & embeddings")
