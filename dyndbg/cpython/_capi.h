/* What every compiled part of dyndbg shares of the C API: cpython/_frames.c
 * and the translation units of engine/recording/_history and
 * engine/tracing/_settrace and _monitoring (setup.py lists them).
 *
 * Return codes. A function that answers with an int answers one of three
 * kinds, named by its return type; DYNDBG_ERROR (-1) always means an error
 * is set:
 *   dyndbg_status    DYNDBG_OK, or DYNDBG_ERROR
 *   dyndbg_truth     DYNDBG_TRUE or DYNDBG_FALSE, as PyObject_IsTrue answers; or DYNDBG_ERROR
 *   dyndbg_decision  a compiled filter's fast path: DYNDBG_ANSWERED (the event
 *                    is done with here), DYNDBG_SLOW_PATH (it goes on to the
 *                    Python function behind the filter); or DYNDBG_ERROR
 * A function returning a count or an index returns DYNDBG_ERROR on an error.
 *
 * References, as coverage.py's ctracer.c marks them: a PyObject * a function
 * returns, or a local holds, is `owned` (a new reference: whoever holds it
 * releases it) or `borrowed` (valid while its owner holds it; never
 * released). Each function says which it returns; a borrowed local is
 * marked where it is taken, as are owned ones where that is not plain from
 * the function called. A struct's PyObject * fields are owned, but where
 * marked otherwise.
 *
 * The error being raised is taken and set again through dyndbg_error_take
 * and dyndbg_error_restore: PyErr_Fetch and PyErr_Restore are deprecated
 * from 3.12 on.
 *
 * DYNDBG_HIDDEN marks what one translation unit of an extension shares with
 * the others (all named dyndbg_*): kept out of the extension's exported
 * symbols, where the compiler knows how.
 */
#ifndef DYNDBG_CAPI_H
#define DYNDBG_CAPI_H

#include <Python.h>

#if defined(__GNUC__) && !defined(_WIN32) && !defined(__CYGWIN__)
#define DYNDBG_HIDDEN __attribute__((visibility("hidden")))
#else
#define DYNDBG_HIDDEN
#endif

enum {
    DYNDBG_ERROR = -1,      /* every kind: an error is set */
    DYNDBG_OK = 0,          /* dyndbg_status */
    DYNDBG_FALSE = 0,       /* dyndbg_truth */
    DYNDBG_TRUE = 1,
    DYNDBG_SLOW_PATH = 0,   /* dyndbg_decision */
    DYNDBG_ANSWERED = 1,
};

typedef int dyndbg_status;      /* DYNDBG_OK or DYNDBG_ERROR */
typedef int dyndbg_truth;       /* DYNDBG_TRUE, DYNDBG_FALSE or DYNDBG_ERROR */
typedef int dyndbg_decision;    /* DYNDBG_ANSWERED, DYNDBG_SLOW_PATH or DYNDBG_ERROR */

/* *slot = the interned string `text` (owned; kept for the process) */
static inline dyndbg_status
dyndbg_intern(PyObject **slot, const char *text)
{
    *slot = PyUnicode_InternFromString(text);
    return *slot == NULL ? DYNDBG_ERROR : DYNDBG_OK;
}

/* The error being raised, taken (no error is set after): owned, normalized,
 * its traceback set on it, as 3.12 keeps it; NULL when none is set. */
static inline PyObject *
dyndbg_error_take(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (value != NULL && traceback != NULL)
        PyException_SetTraceback(value, traceback);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    return value;
#endif
}

/* dyndbg_error_take's error raised again, with its traceback (the reference
 * stolen); nothing when it is NULL. */
static inline void
dyndbg_error_restore(PyObject *error)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(error);
#else
    if (error != NULL)
        PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(error)), error,
                      PyException_GetTraceback(error));
#endif
}

/* The garbage collector no longer walks `object` (it holds no cycle). */
static inline void
dyndbg_untrack(PyObject *object)
{
    if (PyObject_GC_IsTracked(object))
        PyObject_GC_UnTrack(object);
}

#endif
