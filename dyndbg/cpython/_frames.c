/* The compiled slot reader: valuestack._read_stack_with's work in C.
 *
 * Reading a frame's slots with ctypes costs about 7 us; recording reads them
 * at every instruction. This reads the same memory, with the same checks,
 * using the byte offsets of the validated layout that valuestack.py passes
 * to configure() (layouts.py stays the one place that knows them), so the C
 * code has no Python-version branches of its own. Nothing here is read
 * before the layout check has passed (valuestack.stack_support).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <stdint.h>

#include "_capi.h"
#include "_frames.h"

static Py_ssize_t f_frame_at, f_code_at, stacktop_at, localsplus_at;
static int stack_pointer;            /* 3.14+: a stack pointer and tagged slots */
static int event_mode;               /* how the top is known at an event: enum EventMode */
static int checked;                  /* the start-up probe read right with this layout */
static PyObject *null_object;        /* valuestack.NULL: owned */
static PyObject *unavailable;        /* valuestack.StackUnavailable: owned */

/* valuestack._at_event's three cases, chosen from the layout by valuestack.py:
 * valuestack.EventMode's values (tests/test_c_boundary_unit.py pins them) */
enum EventMode {
    STORED_TOP = 0,      /* 3.11: the stored top */
    STATIC_DEPTH = 1,    /* 3.12, 3.13: none stored; the depth from the bytecode */
    CHECKED_TOP = 2,     /* 3.14+: the stored pointer, which must agree with that depth */
};

#define TAG_BITS ((uintptr_t)3)
#define STACKREF_NULL ((uintptr_t)1)
#define INT_TAG ((uintptr_t)3)

/* configure(...): None (owned), or NULL with an error set */
static PyObject *
configure(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *null, *error;    /* borrowed */
    if (!PyArg_ParseTuple(args, "nnnnpiOO", &f_frame_at, &f_code_at, &stacktop_at,
                          &localsplus_at, &stack_pointer, &event_mode, &null, &error))
        return NULL;
    Py_XSETREF(null_object, Py_NewRef(null));
    Py_XSETREF(unavailable, Py_NewRef(error));
    checked = 0;
    Py_RETURN_NONE;
}

/* mark_checked(): the probe passed (valuestack._use_compiled_reader); only
 * then does read_at_event, which recording calls, read anything. */
static PyObject *
mark_checked(PyObject *Py_UNUSED(self), PyObject *Py_UNUSED(unused))
{
    checked = 1;
    Py_RETURN_NONE;
}

/* NULL, with StackUnavailable(why) set */
static PyObject *
fail(const char *why)
{
    PyErr_SetString(unavailable ? unavailable : PyExc_RuntimeError, why);
    return NULL;
}

static inline uintptr_t
pointer_at(const char *address)
{
    uintptr_t value;
    memcpy(&value, address, sizeof value);
    return value;
}

/* The stored stack top as an index into localsplus; -1 where none is stored
 * (not an error: no error is set). */
static Py_ssize_t
stored_top(const char *iframe)
{
    if (!stack_pointer) {
        int top;
        memcpy(&top, iframe + stacktop_at, sizeof top);
        return top;
    }
    uintptr_t pointer = pointer_at(iframe + stacktop_at);
    uintptr_t start = (uintptr_t)(iframe + localsplus_at);
    if (!pointer || pointer < start || (pointer - start) % sizeof(void *))
        return -1;
    return (Py_ssize_t)((pointer - start) / sizeof(void *));
}

/* A slot as an object (owned), or NULL with StackUnavailable set. */
static PyObject *
slot_object(uintptr_t bits)
{
    if (!stack_pointer)
        return Py_NewRef(bits ? (PyObject *)bits : null_object);
    if (!bits || bits == STACKREF_NULL)
        return Py_NewRef(null_object);
    uintptr_t tag = bits & TAG_BITS;
    if (tag == INT_TAG)   /* the int it stands for, as 3.11 to 3.13 kept a PyLong */
        return PyLong_FromSsize_t((Py_ssize_t)(intptr_t)bits >> 2);
    if (tag == 2)
        return fail("a stack slot holds no Python object here");
    return Py_NewRef((PyObject *)(bits & ~TAG_BITS));
}

/* The arguments of valuestack._read_stack_with, with -1 for None: the slots,
 * a list (owned), or NULL with an error set. */
static PyObject *
read_frame(PyObject *frame, Py_ssize_t depth, int stored, int with_locals,
           Py_ssize_t at_most, Py_ssize_t expected)
{
    if (null_object == NULL)
        return fail("the compiled slot reader is not configured");
    const char *iframe = (const char *)pointer_at((const char *)frame + f_frame_at);
    if (!iframe)
        return fail("frame has no interpreter frame");
    PyCodeObject *code = PyFrame_GetCode((PyFrameObject *)frame);     /* owned */
    uintptr_t code_bits = pointer_at(iframe + f_code_at);
    if (stack_pointer)
        code_bits &= ~TAG_BITS;
    Py_ssize_t base = code->co_nlocalsplus, stacksize = code->co_stacksize;
    int same_code = code_bits == (uintptr_t)code;
    Py_DECREF(code);
    if (!same_code)
        return fail("frame layout does not match (code pointer differs)");
    Py_ssize_t top = stored ? stored_top(iframe) : -1;
    if (top < base || top > base + stacksize) {
        if (depth >= 0 && depth <= stacksize)
            top = base + depth;   /* not stored: the static depth ends the stack */
    }
    else if (at_most >= 0 && top > base + at_most)
        top = base + at_most;
    if (expected >= 0 && top != base + expected)
        return fail("the stored stack pointer disagrees with the bytecode");
    if (top < base || top > base + stacksize)
        return fail("value stack not readable in this frame state");
    Py_ssize_t first = with_locals ? 0 : base;
    PyObject *slots = PyList_New(top - first);     /* owned */
    if (slots == NULL)
        return NULL;
    const char *start = iframe + localsplus_at + sizeof(void *) * first;
    for (Py_ssize_t i = 0; i < top - first; i++) {
        PyObject *value = slot_object(pointer_at(start + sizeof(void *) * i));
        if (value == NULL) {
            Py_DECREF(slots);
            return NULL;
        }
        PyList_SET_ITEM(slots, i, value);
    }
    return slots;
}

/* At an instruction event (valuestack._at_event): `depths` maps the code's
 * instruction offsets to the stack depth before each (stackdepth.py), or is
 * None where the top is stored (3.11). Exported to engine/recording/_history.c
 * (_frames.h: dyndbg_read_at_event_fn). */
static PyObject *
read_at_event(PyObject *frame, PyObject *depths, int with_locals)
{
    if (!checked)
        return fail("the compiled slot reader has not passed its check");
    if (event_mode == STORED_TOP)
        return read_frame(frame, -1, 1, with_locals, -1, -1);
    if (depths == NULL || !PyDict_Check(depths))
        return fail("no stack depths given for this code");
    PyObject *offset = PyLong_FromLong(PyFrame_GetLasti((PyFrameObject *)frame));  /* owned */
    if (offset == NULL)
        return NULL;
    PyObject *found = PyDict_GetItemWithError(depths, offset);   /* borrowed */
    Py_DECREF(offset);
    if (found == NULL)
        return PyErr_Occurred() ? NULL : fail("no instruction starts at this frame's offset");
    Py_ssize_t depth = PyLong_AsSsize_t(found);
    if (depth == -1 && PyErr_Occurred())
        return NULL;
    if (event_mode == STATIC_DEPTH)
        return read_frame(frame, depth, 0, with_locals, -1, -1);
    return read_frame(frame, -1, 1, with_locals, -1, depth);
}

/* read(frame, depth, stored, with_locals, at_most, expected) -> list */
static PyObject *
read_slots(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *frame;    /* borrowed */
    Py_ssize_t depth, at_most, expected;
    int stored, with_locals;
    if (!PyArg_ParseTuple(args, "O!nppnn", &PyFrame_Type, &frame, &depth, &stored,
                          &with_locals, &at_most, &expected))
        return NULL;
    return read_frame(frame, depth, stored, with_locals, at_most, expected);
}

/* read_at_event(frame, depths, with_locals) -> list */
static PyObject *
read_at_event_py(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *frame, *depths;   /* borrowed */
    int with_locals;
    if (!PyArg_ParseTuple(args, "O!Op", &PyFrame_Type, &frame, &depths, &with_locals))
        return NULL;
    return read_at_event(frame, depths, with_locals);
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(f_frame, f_code, stacktop, localsplus, stack_pointer, event_mode, NULL, "
     "StackUnavailable)"},
    {"read", read_slots, METH_VARARGS,
     "read(frame, depth, stored, with_locals, at_most, expected) -> list"},
    {"mark_checked", mark_checked, METH_NOARGS, "mark_checked(): the layout passed the probe"},
    {"read_at_event", read_at_event_py, METH_VARARGS,
     "read_at_event(frame, depths, with_locals) -> list"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "dyndbg.cpython._frames",
    .m_doc = "dyndbg's compiled slot reader (see valuestack.py).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__frames(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    /* engine/recording/_history.c calls read_at_event directly, through this capsule */
    static void *api[FRAMES_API_SIZE] = {[FRAMES_API_READ_AT_EVENT] = (void *)read_at_event};
    PyObject *capsule = PyCapsule_New(api, DYNDBG_FRAMES_CAPSULE, NULL);     /* owned */
    if (capsule == NULL || PyModule_AddObject(m, "API", capsule) < 0) {
        Py_XDECREF(capsule);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
