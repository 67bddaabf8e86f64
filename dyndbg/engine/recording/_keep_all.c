/* A frame's slots kept, in C, as recorded_values.py keeps them
 * (_kept_values.h): which slots a record reuses from the frame's previous
 * one (slot_sources), and the others kept anew (keep_all). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_kept_values.h"

Py_ssize_t
dyndbg_slot_sources(const Keeping *self, PyObject *values, PyObject *previous, PyObject *tokens,
                    int settled, PyObject *seq, Py_ssize_t *sources)
{
    Py_ssize_t count = PyList_GET_SIZE(values), moved = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *value = PyList_GET_ITEM(values, i);     /* borrowed */
        Py_ssize_t known = PyList_GET_SIZE(previous), j = -1;
        if (i < known && PyList_GET_ITEM(previous, i) == value)
            j = i;
        else {
            /* the last slot holding it, as the dict in slot_sources finds */
            for (Py_ssize_t k = known - 1; k >= 0; k--) {
                if (PyList_GET_ITEM(previous, k) == value) {
                    j = k;
                    break;
                }
            }
        }
        if (j >= 0 && !settled) {
            if (j >= PyList_GET_SIZE(tokens))
                j = -1;
            else {
                PyObject *token = PyList_GET_ITEM(tokens, j);     /* borrowed */
                if (token != Py_None) {
                    Py_INCREF(token);       /* both owned while the token is checked */
                    Py_INCREF(value);
                    dyndbg_truth holds = dyndbg_token_holds(self, token, value, seq);
                    Py_DECREF(token);
                    Py_DECREF(value);
                    if (holds == DYNDBG_ERROR)
                        return DYNDBG_ERROR;
                    if (holds == DYNDBG_FALSE)
                        j = -1;
                }
            }
        }
        sources[i] = j;
        if (j != i)
            moved++;
    }
    return moved;
}

dyndbg_status
dyndbg_keep_all(const Keeping *self, PyObject *values, PyObject *kept, PyObject *tokens,
                const Py_ssize_t *sources, PyObject *seq, int *anew)
{
    Py_ssize_t count = PyList_GET_SIZE(values);
    /* A slot reusing another's kept value reads it at its old place: the
     * lists are copied first only where that place changes or is cut off
     * (most records only push or replace values). */
    int copy = 0;
    for (Py_ssize_t i = 0; i < count && !copy; i++) {
        Py_ssize_t j = sources[i];
        copy = j >= 0 && j != i && (j >= count || sources[j] != j);
    }
    PyObject *old_kept = copy ? PyList_GetSlice(kept, 0, PY_SSIZE_T_MAX)
                              : Py_NewRef(kept);      /* owned */
    PyObject *old_tokens = copy ? PyList_GetSlice(tokens, 0, PY_SSIZE_T_MAX)
                                : Py_NewRef(tokens);  /* owned */
    int failed = old_kept == NULL || old_tokens == NULL ||
        (PyList_GET_SIZE(kept) > count &&
         PyList_SetSlice(kept, count, PY_SSIZE_T_MAX, NULL) < 0) ||
        (PyList_GET_SIZE(tokens) > count &&
         PyList_SetSlice(tokens, count, PY_SSIZE_T_MAX, NULL) < 0);
    for (Py_ssize_t i = 0; i < count && !failed; i++) {
        Py_ssize_t j = sources[i];
        if (j == i)
            continue;
        PyObject *kept_value, *token;       /* owned */
        if (j >= 0) {
            if (j >= PyList_GET_SIZE(old_kept) || j >= PyList_GET_SIZE(old_tokens)) {
                PyErr_SetString(PyExc_RuntimeError, "history: a track's lists differ in length");
                failed = 1;
                break;
            }
            kept_value = Py_NewRef(PyList_GET_ITEM(old_kept, j));
            token = Py_NewRef(PyList_GET_ITEM(old_tokens, j));
        }
        else {
            if (dyndbg_keep_value(self, PyList_GET_ITEM(values, i), seq, 0, &kept_value, &token,
                                  anew) < 0) {
                failed = 1;
                break;
            }
        }
        if (i < PyList_GET_SIZE(kept) && i < PyList_GET_SIZE(tokens)) {
            PyList_SetItem(kept, i, kept_value);    /* steals */
            PyList_SetItem(tokens, i, token);
        }
        else {
            failed = PyList_Append(kept, kept_value) < 0 || PyList_Append(tokens, token) < 0;
            Py_DECREF(kept_value);
            Py_DECREF(token);
        }
    }
    Py_XDECREF(old_kept);
    Py_XDECREF(old_tokens);
    return failed ? DYNDBG_ERROR : DYNDBG_OK;
}
