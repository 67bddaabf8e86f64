"""The tracing mechanisms, one module each, behind one small interface
(tracer.py: what the engine drives, `Tracer`, and what a mechanism calls,
`EventSink`): sys.settrace (settrace.py, with the compiled filters of
_settrace.c wired in by compiled_filters.py) and sys.monitoring
(monitoring.py, _monitoring.c; resume_calls.py, the resume functions it
watches as they are called). choice.py picks one for this Python;
_fast_paths.c is the C half of ../fast_paths.py that both extensions share."""
