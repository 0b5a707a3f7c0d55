/* <stropts.h> for rstreams: see <sys/stropts.h>. */
#ifndef _RSTREAMS_STROPTS_H
#define _RSTREAMS_STROPTS_H
#include <sys/stropts.h>
#endif
