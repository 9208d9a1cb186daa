"""The `reasoner` command's exit statuses.

They follow what scripts around Soufflé expect to branch on: 0 success, 2 a program error
(printed as `file:line:col: code: message` with the source line and a caret), 1 bad input data
(a malformed or missing facts file, a bad epochs directory, an unsupported I/O parameter, an
unwritable output), 3 a failed `replay --check` (the maintained state differs from a fresh
Bootstrap: an engine bug, never a user error).
"""

EXIT_OK = 0
EXIT_INPUT_ERROR = 1
EXIT_PROGRAM_ERROR = 2
EXIT_CHECK_FAILED = 3
