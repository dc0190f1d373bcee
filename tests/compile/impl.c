/* The one file that holds the implementation. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
