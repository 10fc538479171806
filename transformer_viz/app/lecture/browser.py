"""What the Lecture page (transformer_viz/app/pages/lecture.py) puts in the browser: the clicker's
keys and the projector mode's CSS. Plain strings, no Streamlit."""

# The clicker: its keys press the Next and Previous buttons, unless the reader is typing in a field.
KEYS_JS = """<script>
if (!window.__lectureKeys) {
  window.__lectureKeys = true;
  // the closed step list still obeys the clicker
  const typing = (el) => el && (el.isContentEditable || el.tagName === 'TEXTAREA'
    || (el.tagName === 'INPUT' && !['checkbox', 'radio', 'button'].includes(el.type)
        && !(el.closest('.st-key-lecture_jump') && el.getAttribute('aria-expanded') !== 'true')));
  window.addEventListener('keydown', (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) return;
    const next = ['ArrowRight', 'PageDown', ' '].includes(event.key);
    if (!next && !['ArrowLeft', 'PageUp'].includes(event.key)) return;
    const button = document.querySelector(next ? '.st-key-lecture_next button'
                                               : '.st-key-lecture_prev button');
    if (!button) return;  // another page
    // no scrolling, no toggle of a focused switch, no second click of a focused button
    event.preventDefault();
    event.stopPropagation();
    if (!button.disabled) button.click();
  }, true);
}
</script>"""
# Projector mode: body text 24 px, less padding, the figure with the navigation inside 1280×720.
PROJECTOR_CSS = """<style>
/* below the header */
[data-testid="stMainBlockContainer"] {padding: 4rem 1.5rem 1rem 1.5rem; max-width: 100%;}
[data-testid="stMain"] {font-size: 24px;}
[data-testid="stMain"] [data-testid="stMarkdownContainer"] p, [data-testid="stMain"] li,
[data-testid="stMain"] button p, [data-testid="stMain"] a p {font-size: 24px;}
[data-testid="stMain"] h1 {font-size: 2rem; padding: 0.25rem 0;}
[data-testid="stMain"] [data-testid="stSelectbox"] input {font-size: 22px;}
[data-testid="stMain"] .katex {font-size: 1.25em;}
[data-testid="stMain"] .katex-display {overflow-x: auto; overflow-y: hidden;}
/* A figure that needs more width than its column beside the text goes under the text, at full
   width. */
.st-key-lecture_columns [data-testid="stHorizontalBlock"] {flex-wrap: wrap;}
.st-key-lecture_columns [data-testid="stColumn"] {flex-grow: 1;}
</style>"""
# The width the figure needs (widgets.chart's), as the figure column's least width.
FIGURE_WIDTH_CSS = """<style>
.st-key-lecture_columns [data-testid="stColumn"]:last-child {min-width: %dpx;}
</style>"""
