/* history._Track in C (_track.h). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>        /* offsetof */

#include "../../cpython/_members.h"
#include "_track.h"

static int
track_traverse(Track *self, visitproc visit, void *arg)
{
    Py_VISIT(self->caller);
    Py_VISIT(self->newest);
    Py_VISIT(self->raw);
    Py_VISIT(self->kept);
    Py_VISIT(self->tokens);
    Py_VISIT(self->locals);
    Py_VISIT(self->opname);
    return 0;
}

static int
track_clear(Track *self)
{
    Py_CLEAR(self->caller);
    Py_CLEAR(self->newest);
    Py_CLEAR(self->raw);
    Py_CLEAR(self->kept);
    Py_CLEAR(self->tokens);
    Py_CLEAR(self->locals);
    Py_CLEAR(self->opname);
    return 0;
}

static void
track_dealloc(Track *self)
{
    PyObject_GC_UnTrack(self);
    track_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Track(caller), as _Track(caller) starts: 0, or -1 with an error set */
static int
track_init(Track *self, PyObject *args, PyObject *Py_UNUSED(kwargs))
{
    PyObject *caller;   /* borrowed */
    if (!PyArg_ParseTuple(args, "O!:Track", &PyLong_Type, &caller))
        return -1;
    track_clear(self);
    self->caller = Py_NewRef(caller);
    self->newest = PyLong_FromLong(-1);
    self->raw = PyList_New(0);
    self->kept = PyList_New(0);
    self->tokens = PyList_New(0);
    self->locals = PyTuple_New(0);
    self->opname = PyUnicode_FromString("");
    return self->newest && self->raw && self->kept && self->tokens && self->locals &&
        self->opname ? 0 : -1;
}

static PyMemberDef track_members[] = {
    {"caller", Py_T_OBJECT_EX, offsetof(Track, caller), 0, NULL},
    {"newest", Py_T_OBJECT_EX, offsetof(Track, newest), 0, NULL},
    {"raw", Py_T_OBJECT_EX, offsetof(Track, raw), 0, NULL},
    {"kept", Py_T_OBJECT_EX, offsetof(Track, kept), 0, NULL},
    {"tokens", Py_T_OBJECT_EX, offsetof(Track, tokens), 0, NULL},
    {"locals", Py_T_OBJECT_EX, offsetof(Track, locals), 0, NULL},
    {"opname", Py_T_OBJECT_EX, offsetof(Track, opname), 0, NULL},
    {NULL},
};

PyTypeObject DyndbgTrack_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "dyndbg.engine.recording._history.Track",
    .tp_doc = "history._Track in C: a live recorded frame's newest slots and what was kept",
    .tp_basicsize = sizeof(Track),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)track_init,
    .tp_dealloc = (destructor)track_dealloc,
    .tp_traverse = (traverseproc)track_traverse,
    .tp_clear = (inquiry)track_clear,
    .tp_members = track_members,
};

PyObject *
dyndbg_track_list(PyObject *value, const char *name)
{
    if (value == NULL || !PyList_CheckExact(value)) {
        PyErr_Format(PyExc_TypeError, "history: a track's %s is not a list", name);
        return NULL;
    }
    return Py_NewRef(value);
}
