"""What `record on` keeps: the recorded history (history.py; _history.c its
compiled recording loop's module: _recorder.c the Recorder's fields and
set-up, _record.c the loop itself, _kept_values.h what it keeps of a value
in C (_keep_value.c, _keep_all.c, _token_checks.c whether a kept value still
holds), _track.c a recorded frame's track) and what is kept of each value
(recorded_values.py, the reference the compiled keeper is tested against)."""
