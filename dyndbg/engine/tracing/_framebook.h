/* The settrace mechanism's book of its traced frames, kept from C
 * (_framebook.c): what settrace.py's _add, _drop, _release and
 * _maybe_remove do, and the engine's forget (Engine.forget empties
 * engine.frame_keyed of a frame's id). The compiled filters start and
 * release a frame with these, with no Python call; the Python functions
 * stay the reference and the whole of the pure-Python core. */
#ifndef DYNDBG_FRAMEBOOK_H
#define DYNDBG_FRAMEBOOK_H

#include <Python.h>

#include "../../cpython/_capi.h"

typedef struct {
    PyObject_HEAD
    PyObject *active;   /* tracer.active: live traced generated frames, all threads */
    PyObject *thread;   /* tracer._thread (threading.local): .frames, .installed */
    PyObject *keyed;    /* engine.frame_keyed: a tuple of dicts and sets by id(frame) */
    PyObject *hooks;    /* .has_callback */
    PyObject *lock;     /* threads.ENGINE_LOCK */
} FrameBook;

extern DYNDBG_HIDDEN PyTypeObject DyndbgFrameBook_Type;

/* frame_book(active, thread, keyed, hooks, lock), its arguments checked: a
 * FrameBook (owned), or NULL with an error set */
DYNDBG_HIDDEN PyObject *dyndbg_frame_book(PyObject *module, PyObject *args);

/* Engine.forget: each of engine.frame_keyed emptied of id(frame) */
DYNDBG_HIDDEN dyndbg_status dyndbg_book_forget(FrameBook *book, PyObject *frame);

/* _add: a frame of this thread is traced from now on */
DYNDBG_HIDDEN dyndbg_status dyndbg_book_add(FrameBook *book, PyObject *frame);

/* _drop: from the frame's own thread */
DYNDBG_HIDDEN dyndbg_status dyndbg_book_drop(FrameBook *book, PyObject *frame);

/* _maybe_remove: no traced frame left in this thread, and torch's callback
 * installs the trace again: it goes (_uninstall) */
DYNDBG_HIDDEN dyndbg_status dyndbg_book_maybe_remove(FrameBook *book);

/* _release: the frame can stop no more; the rest of it runs untraced */
DYNDBG_HIDDEN dyndbg_status dyndbg_book_release(FrameBook *book, PyObject *frame);

#endif
