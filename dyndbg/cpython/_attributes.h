/* Reading and updating a Python object's attributes from C: what the
 * compiled recording loop (_history.c) and the tracing mechanisms'
 * filters (tracing/_fast_paths.h) share. Each returns -1 with an error set on an
 * error. */
#ifndef DYNDBG_ATTRIBUTES_H
#define DYNDBG_ATTRIBUTES_H

#include <Python.h>

/* 1 if owner.name is true, 0 if not */
static inline int
attribute_true(PyObject *owner, PyObject *name)
{
    PyObject *value = PyObject_GetAttr(owner, name);
    if (value == NULL)
        return -1;
    int truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    return truth;
}

/* 1 if owner.name is `value` (the same object), 0 if not */
static inline int
attribute_is(PyObject *owner, PyObject *name, PyObject *value)
{
    PyObject *now = PyObject_GetAttr(owner, name);
    if (now == NULL)
        return -1;
    int same = now == value;
    Py_DECREF(now);
    return same;
}

/* 1 if owner.a > owner.b, 0 if not */
static inline int
attribute_greater(PyObject *owner, PyObject *a, PyObject *b)
{
    PyObject *left = PyObject_GetAttr(owner, a);
    PyObject *right = left ? PyObject_GetAttr(owner, b) : NULL;
    int greater = right ? PyObject_RichCompareBool(left, right, Py_GT) : -1;
    Py_XDECREF(left);
    Py_XDECREF(right);
    return greater;
}

/* owner.name += n (an int); 0 on success */
static inline int
attribute_add(PyObject *owner, PyObject *name, Py_ssize_t n)
{
    PyObject *now = PyObject_GetAttr(owner, name);
    if (now == NULL)
        return -1;
    Py_ssize_t value = PyLong_AsSsize_t(now);
    Py_DECREF(now);
    if (value == -1 && PyErr_Occurred())
        return -1;
    PyObject *next = PyLong_FromSsize_t(value + n);
    if (next == NULL)
        return -1;
    int failed = PyObject_SetAttr(owner, name, next);
    Py_DECREF(next);
    return failed;
}

#endif
