/* What the compiled trace filters of _settrace.c share: the names they
 * read and compare, the test of an event's name, the hand-over to the
 * Python trace function behind a filter, and the type boilerplate. */
#ifndef DYNDBG_FILTER_H
#define DYNDBG_FILTER_H

#include <Python.h>
#include <stddef.h>

static PyObject *str_detached, *str_call, *str_line, *str_opcode, *str_exception,
    *str_interrupt_pending, *str_failed_calls, *str_instruction, *str_stepping, *str_version,
    *str_start, *str_return, *str_suspended;

/* The event's name is one of the interpreter's interned strings. */
static int
is_event(PyObject *event, PyObject *name)
{
    return event == name || (PyUnicode_Check(event) && PyUnicode_Compare(event, name) == 0);
}

static PyObject *
hand_over(PyObject *slow, PyObject *const *args)
{
    PyErr_Clear();
    return PyObject_Vectorcall(slow, args, 3, NULL);
}

static int
intern(PyObject **slot, const char *text)
{
    *slot = PyUnicode_InternFromString(text);
    return *slot == NULL ? -1 : 0;
}

static int
filter_names_init(void)
{
    return intern(&str_call, "call") || intern(&str_line, "line") ||
           intern(&str_opcode, "opcode") || intern(&str_exception, "exception") ||
           intern(&str_interrupt_pending, "interrupt_pending") ||
           intern(&str_failed_calls, "failed_calls") || intern(&str_instruction, "instruction") ||
           intern(&str_detached, "detached") || intern(&str_stepping, "stepping") ||
           intern(&str_version, "version") || intern(&str_start, "start") ||
           intern(&str_return, "return") || intern(&str_suspended, "suspended") ? -1 : 0;
}

#define FILTER_TYPE(Name, Fields, Traverse, Clear)                                          \
    static int Name##_traverse(Name *self, visitproc visit, void *arg) { Traverse return 0; } \
    static int Name##_clear(Name *self) { Clear return 0; }                                  \
    static void Name##_dealloc(Name *self)                                                   \
    {                                                                                        \
        PyObject_GC_UnTrack(self);                                                           \
        Name##_clear(self);                                                                  \
        Py_TYPE(self)->tp_free((PyObject *)self);                                            \
    }

#define FILTER_TYPE_OBJECT(Name, Doc)                                                        \
    static PyTypeObject Name##Type = {                                                       \
        PyVarObject_HEAD_INIT(NULL, 0)                                                       \
        .tp_name = "dyndbg.engine.tracing._settrace." #Name,                                         \
        .tp_doc = Doc,                                                                       \
        .tp_basicsize = sizeof(Name),                                                        \
        .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,    \
        .tp_vectorcall_offset = offsetof(Name, vectorcall),                                  \
        .tp_call = PyVectorcall_Call,                                                        \
        .tp_dealloc = (destructor)Name##_dealloc,                                            \
        .tp_traverse = (traverseproc)Name##_traverse,                                        \
        .tp_clear = (inquiry)Name##_clear,                                                   \
    };

#endif
