"""Attention, step by step (to be built)."""

import streamlit as st

from transformer_viz import webapp

sel = webapp.require_selection()
st.title("Attention, step by step")
