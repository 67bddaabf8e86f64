"""What `record on` keeps: the recorded history (history.py; _history.c its
compiled recording loop, with _recorder.h its fields and set-up, _keeping.h
what it keeps of a value in C, _tokens.h whether a kept value still holds,
_track.h a recorded frame's track) and what is kept of each value
(recorded_values.py, the reference the compiled keeper is tested against)."""
