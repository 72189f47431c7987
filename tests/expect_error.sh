#!/bin/sh
# Runs a command that must fail cleanly: a non-zero exit status that is not a crash. ctest's WILL_FAIL
# alone would also pass on a segfault or a sanitizer abort. The caller matches the error message with
# PASS_REGULAR_EXPRESSION and fails on "expect_error: FAIL" with FAIL_REGULAR_EXPRESSION
# (tandem_expect_error in tests/CMakeLists.txt).
"$@"
rc=$?
if [ "$rc" -eq 0 ]; then
  echo "expect_error: FAIL: the command succeeded"
elif [ "$rc" -ge 126 ]; then
  echo "expect_error: FAIL: exit status $rc (a crash, a signal, or the command could not run)"
else
  echo "expect_error: clean failure, exit status $rc"
fi
exit 0
