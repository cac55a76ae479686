/* acl_python.h: the embedded-interpreter calls acl_bridge.c offers the rest of the acl library. */
#ifndef OPBUILD_ACL_PYTHON_H
#define OPBUILD_ACL_PYTHON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "acl_internal.h"

/* Start the interpreter if needed and take the GIL: 0, or -1 (the reason reported for `api`). */
ACL_INTERNAL int acl_py_enter(const char *api, PyGILState_STATE *g);
/* The pending Python exception as text, cleared; malloc'ed. GIL held. */
ACL_INTERNAL char *acl_py_error_text(void);
/* module.func(*args) (args is stolen; NULL args: the pending exception). The result, or NULL with
 * *msg malloc'ed. GIL held. */
ACL_INTERNAL PyObject *acl_py_call(const char *module, const char *func, PyObject *args, char **msg);

#endif /* OPBUILD_ACL_PYTHON_H */
