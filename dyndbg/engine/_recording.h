/* What the compiled tracing mechanisms (_settrace.c, _monitoring.c) share:
 * recording one instruction with the compiled History (engine/_history.c)
 * under the engine lock, and handing a failure to the mechanism's _fail. */
#ifndef DYNDBG_RECORDING_H
#define DYNDBG_RECORDING_H

#include <Python.h>

/* 1 if owner.name is true, 0 if not, -1 on an error */
static int
attribute_true(PyObject *owner, PyObject *name)
{
    PyObject *value = PyObject_GetAttr(owner, name);
    if (value == NULL)
        return -1;
    int truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    return truth;
}

/* events[kind] += 1 on the mechanism's Counter */
static int
count_event(PyObject *events, PyObject *kind)
{
    PyObject *now = PyDict_GetItemWithError(events, kind);     /* borrowed */
    if (now == NULL && PyErr_Occurred())
        return -1;
    PyObject *next = PyLong_FromLong(now ? PyLong_AsLong(now) + 1 : 1);
    if (next == NULL)
        return -1;
    int failed = PyDict_SetItem(events, kind, next);
    Py_DECREF(next);
    return failed;
}

/* record(frame, spec) under lock; after(result) for a result other than
 * RECORDED (0). 0, or -1 with an error set (the lock released either way). */
static int
record_instruction(PyObject *record, PyObject *frame, PyObject *spec, PyObject *lock,
                   PyObject *after)
{
    PyObject *held = PyObject_CallMethod(lock, "acquire", NULL);
    if (held == NULL)
        return -1;
    Py_DECREF(held);
    PyObject *args[] = {frame, spec};
    PyObject *result = PyObject_Vectorcall(record, args, 2, NULL);
    if (result != NULL && PyLong_Check(result) && PyLong_AsLong(result) != 0) {
        PyObject *done = PyObject_CallOneArg(after, result);
        Py_XDECREF(done);
        if (done == NULL)
            Py_CLEAR(result);
    }
    Py_XDECREF(result);
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);    /* the lock is released after an error too */
    PyObject *released = PyObject_CallMethod(lock, "release", NULL);
    if (type != NULL) {
        Py_XDECREF(released);
        PyErr_Restore(type, value, tb);
        return -1;
    }
    if (released == NULL)
        return -1;
    Py_DECREF(released);
    return 0;
}

/* The mechanism's _fail(error) with the error set now: control flow (a
 * Ctrl-C) goes on into the program, as from its Python callbacks (NULL
 * returned, the error set); any other error is the engine's, said once, and
 * it detaches (None returned). */
static PyObject *
hand_failure(PyObject *fail)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *handled = PyObject_CallOneArg(fail, value ? value : Py_None);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return handled;
}

#endif
