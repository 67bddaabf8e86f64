/* Reading and updating a Python object's attributes from C
 * (_attributes.c): what the compiled recording loop (engine/recording/)
 * and the tracing mechanisms' filters (engine/tracing/) share. The return
 * codes are _capi.h's. */
#ifndef DYNDBG_ATTRIBUTES_H
#define DYNDBG_ATTRIBUTES_H

#include <Python.h>

#include "_capi.h"

/* owner.name is true */
DYNDBG_HIDDEN dyndbg_truth dyndbg_attribute_true(PyObject *owner, PyObject *name);

/* owner.name is `value` (the same object) */
DYNDBG_HIDDEN dyndbg_truth dyndbg_attribute_is(PyObject *owner, PyObject *name, PyObject *value);

/* owner.a > owner.b */
DYNDBG_HIDDEN dyndbg_truth dyndbg_attribute_greater(PyObject *owner, PyObject *a, PyObject *b);

/* owner.name += n (an int) */
DYNDBG_HIDDEN dyndbg_status dyndbg_attribute_add(PyObject *owner, PyObject *name, Py_ssize_t n);

#endif
