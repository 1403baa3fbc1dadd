// pt2f/generated.h: include the flatc-generated pt2format_generated.h safely.
//
// SymExprKind has a value named INFINITY, which <math.h> defines as a macro;
// the macro is suspended around the generated header so include order does
// not matter. Code that names SymExprKind::INFINITY does the same.
#pragma once

#pragma push_macro("INFINITY")
#undef INFINITY
#include "pt2format_generated.h"
#pragma pop_macro("INFINITY")
