/* The OTF2 API that rankscale's archive writer and reader call. */
#include <otf2/otf2.h>
