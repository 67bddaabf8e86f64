/* The compiled recording loop's module: History.record (history.py) in C.
 *
 * The Recorder (_recorder.c), bound to one History, records an instruction
 * (_record.c: read the frame's slots through cpython/_frames.c's capsule,
 * keep what changed, append the Record); what it keeps of each value is
 * _kept_values.h's, a frame's track _track.c's. history.py's Python code is
 * the reference and the fallback.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../../cpython/_capi.h"
#include "../../cpython/_frames.h"
#include "_kept_values.h"
#include "_recorder.h"
#include "_track.h"

/* untrack(obj): what the keeper made (a container of kept values, a
 * Summary) holds no cycle; the garbage collector need not walk it. None (owned). */
static PyObject *
untrack_py(PyObject *Py_UNUSED(module), PyObject *object)
{
    dyndbg_untrack(object);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"untrack", untrack_py, METH_O, "untrack(obj): the garbage collector no longer walks obj"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "dyndbg.engine.recording._history",
    .m_doc = "dyndbg's compiled recording loop (see history.py).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__history(void)
{
    if (dyndbg_keeping_intern() < 0 || dyndbg_recorder_intern() < 0 ||
        dyndbg_record_intern() < 0)
        return NULL;
    void **api = PyCapsule_Import(DYNDBG_FRAMES_CAPSULE, 0);     /* borrowed: the capsule's */
    if (api == NULL)
        return NULL;
    dyndbg_read_at_event = (dyndbg_read_at_event_fn)api[FRAMES_API_READ_AT_EVENT];
    if (PyType_Ready(&DyndbgRecorder_Type) < 0 || PyType_Ready(&DyndbgTrack_Type) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);     /* owned */
    if (m == NULL)
        return NULL;
    if (PyModule_AddObject(m, "Recorder", Py_NewRef((PyObject *)&DyndbgRecorder_Type)) < 0 ||
        PyModule_AddObject(m, "Track", Py_NewRef((PyObject *)&DyndbgTrack_Type)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
