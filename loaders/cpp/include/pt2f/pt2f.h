// pt2f/pt2f.h: the whole C++ reader in one include.
#pragma once

#include "pt2f/container.h"
#include "pt2f/crc32.h"
#include "pt2f/dump.h"
#include "pt2f/error.h"
#include "pt2f/reader.h"
#include "pt2f/symexpr.h"
#include "pt2f/validate.h"
