"""Built native readers for tests that compare all three readers; a missing toolchain fails, never skips."""

import pytest

import native_util_cpp as C
import native_util_ts as T


@pytest.fixture(scope="module")
def cpp_release():
    why = C.missing_toolchain()
    if why:
        pytest.fail(f"the C++ reader tests need a C++ toolchain: {why}")
    return C.build("release")


@pytest.fixture(scope="module")
def ts_reader():
    why = T.missing_toolchain()
    if why:
        pytest.fail(f"the TypeScript reader tests need Node.js: {why}")
    T.build()
    return T
