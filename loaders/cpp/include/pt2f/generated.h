// pt2f/generated.h: the one include of the flatc-generated pt2format_generated.h.
#pragma once

#include "pt2format_generated.h"
