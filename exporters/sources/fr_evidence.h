// What a verdict on Flight Recorder dumps cites, named as the dumps name it: each evidence record
// by its entry's record_id (the reader's record indices count the records it made up too, so they
// are not FR's), and a send or receive at issue also by torch's p2p_seq_id, beside ncclscope's
// per-peer number.
#pragma once

#include "exporters/sources/fr_ring_source.h"
#include "hang_detector/verdicts/verdict.h"

namespace ncclscope::exporters {

// Sets Evidence::fr_record_id and Verdict::fr_p2p_seq_id / fr_p2p_rank in *analysis, which was
// made from `source`'s dumps; decodes each cited rank's dump once more. A dump that cannot be read
// again leaves its records as they were, with a line in analysis->input.notes. Not thread-safe
// for *analysis.
void NameFrEntries(const FrRingSource& source, hang_detector::Analysis* analysis);

}  // namespace ncclscope::exporters
