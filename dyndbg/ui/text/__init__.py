"""Text with no I/O, shared by every front end (the prompt, the editor's DAP,
the notebook): stops, instructions and frames (render), short safe summaries
of values (values), views at graph boundaries (boundaries), what is typed
(parsing) and colour (style)."""
