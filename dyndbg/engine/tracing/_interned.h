/* The names the compiled parts of _settrace.c read and compare (event names,
 * attribute names), interned once by dyndbg_interned_init (_interned.c). */
#ifndef DYNDBG_INTERNED_H
#define DYNDBG_INTERNED_H

#include <Python.h>

#include "../../cpython/_capi.h"

typedef struct {
    /* the interpreter's event names */
    PyObject *call, *line, *opcode, *exception, *return_;
    /* the tracer's Counter's keys */
    PyObject *instruction, *start;
    /* attributes: the engine's, its policy's and hooks', the tracer's thread state's */
    PyObject *detached, *interrupt_pending, *failed_calls, *stepping, *version, *suspended,
        *frames, *installed, *has_callback;
    /* a frame's */
    PyObject *f_trace, *f_trace_lines, *f_trace_opcodes;
} InternedNames;    /* each owned, for the process */

extern DYNDBG_HIDDEN InternedNames dyndbg_names;

DYNDBG_HIDDEN dyndbg_status dyndbg_interned_init(void);

/* The event's name is `name`: one of the interpreter's interned strings. */
static inline int
dyndbg_is_event(PyObject *event, PyObject *name)
{
    return event == name || (PyUnicode_Check(event) && PyUnicode_Compare(event, name) == 0);
}

#endif
