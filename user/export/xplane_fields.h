/*
 * Field numbers of TSL's xplane.proto (tensorflow.profiler.XSpace and its
 * messages; proto/xplane.proto), shared by the XSpace writer (xspace.c) and
 * the merge into another profiler's XSpace (xspace_merge.c).
 */
#ifndef KX_XPLANE_FIELDS_H
#define KX_XPLANE_FIELDS_H

enum {
	XSPACE_PLANES = 1,
	XSPACE_ERRORS = 2,
	XSPACE_WARNINGS = 3,
	XSPACE_HOSTNAMES = 4,
	XPLANE_ID = 1,
	XPLANE_NAME = 2,
	XPLANE_LINES = 3,
	XPLANE_EVENT_METADATA = 4,
	XPLANE_STAT_METADATA = 5,
	XPLANE_STATS = 6,
	XLINE_ID = 1,
	XLINE_NAME = 2,
	XLINE_TIMESTAMP_NS = 3,
	XLINE_EVENTS = 4,
	XLINE_DURATION_PS = 9,
	XLINE_DISPLAY_ID = 10,
	XLINE_DISPLAY_NAME = 11,
	XEVENT_METADATA_ID = 1,
	XEVENT_OFFSET_PS = 2,
	XEVENT_DURATION_PS = 3,
	XEVENT_STATS = 4,
	XEVENT_NUM_OCCURRENCES = 5,
	XSTAT_METADATA_ID = 1,
	XSTAT_DOUBLE = 2,
	XSTAT_UINT64 = 3,
	XSTAT_INT64 = 4,
	XSTAT_STR = 5,
	XSTAT_REF = 7,
	XMETA_ID = 1,
	XMETA_NAME = 2,
	MAP_KEY = 1,
	MAP_VALUE = 2,
};

#endif /* KX_XPLANE_FIELDS_H */
