// What the directories handed to `analyze`, `timeline`, `stats` or `report` hold, found by content:
// ncclscope's ring files, or PyTorch Flight Recorder dumps (fr_ring_source.h). Ring files win
// when both are there: they hold all a dump does and more.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exporters/sources/fr_ring_source.h"
#include "exporters/sources/ring_source.h"
#include "hang_detector/decision/correlator.h"
#include "hang_detector/ingest/job_index.h"

namespace ncclscope::exporters {

enum class JobInputKind { kRingFiles, kFlightRecorder };

struct JobInput {
  JobInputKind kind = JobInputKind::kRingFiles;
  std::unique_ptr<RingSource> source;  // one pass: files are mapped only while visited
  FrRingSource* fr = nullptr;          // the source, when it reads FR dumps
  // What was found and left aside ("3 Flight Recorder dumps beside the ring files are not
  // read"), one line each.
  std::vector<std::string> notes;
};

// The input of `dirs`, one job's node directories read as one (`job` picks among ring files of
// several jobs across all of them, as DirRingSource does): Flight Recorder dumps when they hold
// dumps and no ring file, else ring files (also when they hold neither: the readers then say
// there is no ring file). nullopt with *error when a directory cannot be listed.
std::optional<JobInput> OpenJobInput(const std::vector<std::string>& dirs, const std::string& job,
                                     std::string* error);

// Every file of `source` compacted and indexed as JobIndex::FromDir does for ring files (files
// visited on `threads` threads; unreadable ones listed in errors()). nullopt with *error when the
// source cannot be listed.
std::optional<hang_detector::JobIndex> IndexSource(RingSource& source, int threads,
                                                   std::string* error);

// The index of an opened input: JobIndex::FromDirs for ring files (the job chosen as `job` says),
// IndexSource for dumps. nullopt with *error when a directory cannot be read.
std::optional<hang_detector::JobIndex> IndexJobInput(const JobInput& input,
                                                     const std::vector<std::string>& dirs,
                                                     const std::string& job, int threads,
                                                     std::string* error);

// A Flight Recorder directory is a snapshot: nothing in a dump says which process wrote it, so no
// process can be checked and the ranks are judged as of the newest dump; torch dumps on a timeout
// but also on request from a healthy job, so a wait is confirmed by its length, not by the dump.
void AdjustForInput(const JobInput& input, hang_detector::AnalyzeOptions* options);

// After hang_detector::Analyze of `input`: Flight Recorder dumps name their records by record_id
// and torch's p2p_seq_id, which the analysis gets (fr_evidence.h); ring files need nothing.
void NameRecordsAsInput(const JobInput& input, hang_detector::Analysis* analysis);

}  // namespace ncclscope::exporters
