/* Names of the annotation event kinds (contract: annot.h). */
#include <string.h>

#include "model/annot.h"

static const char *const what_names[] = {
        [KX_ANN_PUSH] = "push",   [KX_ANN_POP] = "pop", [KX_ANN_MARK] = "mark",
        [KX_ANN_START] = "start", [KX_ANN_END] = "end",
};
#define NWHAT (sizeof(what_names) / sizeof(what_names[0]))

const char *kx_ann_what_name(unsigned int what)
{
	return what < NWHAT && what_names[what] ? what_names[what] : "unknown";
}

unsigned int kx_ann_what_from_name(const char *name)
{
	for (unsigned int i = 1; name && i < NWHAT; i++)
		if (!strcmp(name, what_names[i]))
			return i;
	return 0;
}
