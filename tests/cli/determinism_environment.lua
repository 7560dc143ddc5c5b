-- What LMKIT_DETERMINISTIC did at the process's start, as this script sees it (tests/CMakeLists.txt
-- runs it with several environments): one line, "deterministic=<bool> workspace=<value or unset>".
print(string.format("deterministic=%s workspace=%s", tostring(lmkit.deterministic()),
                    os.getenv("CUBLAS_WORKSPACE_CONFIG") or "unset"))
