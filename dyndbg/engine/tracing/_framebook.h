/* The settrace mechanism's book of its traced frames, kept from C: what
 * settrace.py's _add, _drop, _release and _maybe_remove do, and the
 * engine's forget (Engine.forget empties engine.frame_keyed of a frame's
 * id). The compiled filters (_settrace.c) start and release a frame with
 * these, with no Python call; the Python functions stay the reference and
 * the whole of the pure-Python core. */
#ifndef DYNDBG_FRAMEBOOK_H
#define DYNDBG_FRAMEBOOK_H

#include <Python.h>
#include <frameobject.h>

#include "_fast_paths.h"

static PyObject *str_frames, *str_installed, *str_has_callback, *str_f_trace_lines,
    *str_f_trace_opcodes, *str_f_trace;

static int
framebook_init(void)
{
    return !(str_frames = PyUnicode_InternFromString("frames")) ||
           !(str_installed = PyUnicode_InternFromString("installed")) ||
           !(str_has_callback = PyUnicode_InternFromString("has_callback")) ||
           !(str_f_trace_lines = PyUnicode_InternFromString("f_trace_lines")) ||
           !(str_f_trace_opcodes = PyUnicode_InternFromString("f_trace_opcodes")) ||
           !(str_f_trace = PyUnicode_InternFromString("f_trace")) ? -1 : 0;
}

typedef struct {
    PyObject_HEAD
    PyObject *active;   /* tracer.active: live traced generated frames, all threads */
    PyObject *thread;   /* tracer._thread (threading.local): .frames, .installed */
    PyObject *keyed;    /* engine.frame_keyed: dicts and sets by id(frame) */
    PyObject *hooks;    /* .has_callback */
    PyObject *lock;     /* threads.ENGINE_LOCK */
} FrameBook;

/* Engine.forget: each of engine.frame_keyed emptied of id(frame) */
static int
book_forget(FrameBook *book, PyObject *frame)
{
    PyObject *key = PyLong_FromVoidPtr(frame);    /* id(frame) */
    if (key == NULL)
        return -1;
    int failed = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(book->keyed) && !failed; i++) {
        PyObject *keyed = PyTuple_GET_ITEM(book->keyed, i);
        if (PySet_Check(keyed)) {
            failed = PySet_Discard(keyed, key) < 0;
        } else {
            int has = PyDict_Contains(keyed, key);
            failed = has < 0 || (has && PyDict_DelItem(keyed, key) < 0);
        }
    }
    Py_DECREF(key);
    return failed ? -1 : 0;
}

/* thread.frames = max(0, thread.frames + delta); the new count, or -1 */
static long
book_count(FrameBook *book, long delta)
{
    PyObject *now = PyObject_GetAttr(book->thread, str_frames);
    if (now == NULL)
        return -1;
    long frames = PyLong_AsLong(now);
    Py_DECREF(now);
    if (frames == -1 && PyErr_Occurred())
        return -1;
    if (delta == 0)
        return frames;
    frames = frames + delta < 0 ? 0 : frames + delta;
    PyObject *next = PyLong_FromLong(frames);
    if (next == NULL)
        return -1;
    int failed = PyObject_SetAttr(book->thread, str_frames, next);
    Py_DECREF(next);
    return failed ? -1 : frames;
}

/* _add: a frame of this thread is traced from now on */
static int
book_add(FrameBook *book, PyObject *frame)
{
    if (PyList_Append(book->active, frame) < 0)
        return -1;
    return book_count(book, 1) < 0 ? -1 : 0;
}

/* _drop: from the frame's own thread */
static int
book_drop(FrameBook *book, PyObject *frame)
{
    for (Py_ssize_t i = PyList_GET_SIZE(book->active) - 1; i >= 0; i--) {
        if (PyList_GET_ITEM(book->active, i) == frame) {
            if (PyList_SetSlice(book->active, i, i + 1, NULL) < 0)
                return -1;
            return book_count(book, -1) < 0 ? -1 : 0;
        }
    }
    return 0;
}

/* _maybe_remove: no traced frame left in this thread, and torch's callback
 * installs the trace again: it goes (_uninstall) */
static int
book_maybe_remove(FrameBook *book)
{
    long frames = book_count(book, 0);
    if (frames != 0)
        return frames < 0 ? -1 : 0;
    int callback = attribute_true(book->hooks, str_has_callback);
    if (callback <= 0)
        return callback;
    int installed = attribute_true(book->thread, str_installed);
    if (installed <= 0)
        return installed;
    if (PyObject_SetAttr(book->thread, str_installed, Py_False) < 0)
        return -1;
    PyEval_SetTrace(NULL, NULL);    /* sys.settrace(None) */
    return 0;
}

/* _release: the frame can stop no more; the rest of it runs untraced */
static int
book_release(FrameBook *book, PyObject *frame)
{
    if (PyObject_SetAttr(frame, str_f_trace_opcodes, Py_False) < 0 ||
        PyObject_SetAttr(frame, str_f_trace_lines, Py_False) < 0 ||
        PyObject_SetAttr(frame, str_f_trace, Py_None) < 0 || book_drop(book, frame) < 0)
        return -1;
    if (lock_acquire(book->lock) < 0)
        return -1;
    int forgot = book_forget(book, frame);
    if (lock_release(book->lock) < 0 || forgot < 0)
        return -1;
    return book_maybe_remove(book);
}

static int
FrameBook_traverse(FrameBook *self, visitproc visit, void *arg)
{
    Py_VISIT(self->active);
    Py_VISIT(self->thread);
    Py_VISIT(self->keyed);
    Py_VISIT(self->hooks);
    Py_VISIT(self->lock);
    return 0;
}

static int
FrameBook_clear(FrameBook *self)
{
    Py_CLEAR(self->active);
    Py_CLEAR(self->thread);
    Py_CLEAR(self->keyed);
    Py_CLEAR(self->hooks);
    Py_CLEAR(self->lock);
    return 0;
}

static void
FrameBook_dealloc(FrameBook *self)
{
    PyObject_GC_UnTrack(self);
    FrameBook_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject FrameBookType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "dyndbg.engine.tracing._settrace.FrameBook",
    .tp_doc = "the settrace tracer's traced frames, kept from C (settrace.py)",
    .tp_basicsize = sizeof(FrameBook),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_dealloc = (destructor)FrameBook_dealloc,
    .tp_traverse = (traverseproc)FrameBook_traverse,
    .tp_clear = (inquiry)FrameBook_clear,
};

/* frame_book(active, thread, keyed, hooks, lock), its arguments checked */
static PyObject *
frame_book(PyObject *module, PyObject *args)
{
    PyObject *active, *thread, *keyed, *hooks, *lock;
    if (!PyArg_ParseTuple(args, "O!OO!OO", &PyList_Type, &active, &thread, &PyTuple_Type, &keyed,
                          &hooks, &lock))
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keyed); i++) {
        PyObject *item = PyTuple_GET_ITEM(keyed, i);
        if (!PyDict_Check(item) && !PySet_Check(item))
            return PyErr_Format(PyExc_TypeError, "frame_book: keyed holds dicts and sets");
    }
    FrameBook *self = PyObject_GC_New(FrameBook, &FrameBookType);
    if (self == NULL)
        return NULL;
    self->active = Py_NewRef(active);
    self->thread = Py_NewRef(thread);
    self->keyed = Py_NewRef(keyed);
    self->hooks = Py_NewRef(hooks);
    self->lock = Py_NewRef(lock);
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

#endif
