/* The starts left to C (settrace.py's _starts: id(code) -> FrameStart),
 * read by the CodeFilter and the CallFilter (_filters.h). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_filters.h"
#include "_interned.h"

PyObject *
dyndbg_start_of(PyObject *starts, PyObject *generated, PyObject *code)
{
    PyObject *key = PyLong_FromVoidPtr(code);    /* id(code), owned */
    if (key == NULL)
        return NULL;
    PyObject *start = PyDict_GetItemWithError(starts, key);     /* borrowed */
    int found = start ? PyDict_Contains(generated, key) : 0;
    Py_DECREF(key);
    if (found <= 0 || !PyTuple_Check(start) || PyTuple_GET_SIZE(start) != FRAME_START_FIELDS)
        return NULL;
    return Py_NewRef(start);
}

dyndbg_truth
dyndbg_start_is_current(PyObject *policy, PyObject *start)
{
    PyObject *version = PyObject_GetAttr(policy, dyndbg_names.version);    /* owned */
    dyndbg_truth current =
        version ? PyObject_RichCompareBool(version, PyTuple_GET_ITEM(start, FRAME_START_VERSION),
                                           Py_EQ)
                : DYNDBG_ERROR;
    Py_XDECREF(version);
    return current;
}
