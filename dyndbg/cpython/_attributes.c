/* Reading and updating a Python object's attributes from C (_attributes.h
 * says what each answers). Compiled into each extension that reads Python
 * state (setup.py). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_attributes.h"

dyndbg_truth
dyndbg_attribute_true(PyObject *owner, PyObject *name)
{
    PyObject *value = PyObject_GetAttr(owner, name);    /* owned */
    if (value == NULL)
        return DYNDBG_ERROR;
    dyndbg_truth truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    return truth;
}

dyndbg_truth
dyndbg_attribute_is(PyObject *owner, PyObject *name, PyObject *value)
{
    PyObject *now = PyObject_GetAttr(owner, name);      /* owned */
    if (now == NULL)
        return DYNDBG_ERROR;
    dyndbg_truth same = now == value ? DYNDBG_TRUE : DYNDBG_FALSE;
    Py_DECREF(now);
    return same;
}

dyndbg_truth
dyndbg_attribute_greater(PyObject *owner, PyObject *a, PyObject *b)
{
    PyObject *left = PyObject_GetAttr(owner, a);                    /* owned */
    PyObject *right = left ? PyObject_GetAttr(owner, b) : NULL;     /* owned */
    dyndbg_truth greater = right ? PyObject_RichCompareBool(left, right, Py_GT) : DYNDBG_ERROR;
    Py_XDECREF(left);
    Py_XDECREF(right);
    return greater;
}

dyndbg_status
dyndbg_attribute_add(PyObject *owner, PyObject *name, Py_ssize_t n)
{
    PyObject *now = PyObject_GetAttr(owner, name);      /* owned */
    if (now == NULL)
        return DYNDBG_ERROR;
    Py_ssize_t value = PyLong_AsSsize_t(now);
    Py_DECREF(now);
    if (value == -1 && PyErr_Occurred())
        return DYNDBG_ERROR;
    PyObject *next = PyLong_FromSsize_t(value + n);     /* owned */
    if (next == NULL)
        return DYNDBG_ERROR;
    int failed = PyObject_SetAttr(owner, name, next);
    Py_DECREF(next);
    return failed ? DYNDBG_ERROR : DYNDBG_OK;
}
