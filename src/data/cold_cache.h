// `scalebench io --cold-cache`: reads that come from the storage, not from the page cache. Each file's
// cached pages are dropped (posix_fadvise POSIX_FADV_DONTNEED) before its first read and after each
// read; a probe says whether the file system honoured it (mincore on the file after the drop).
#pragma once
#include <memory>
#include <string>

#include "data/batch_source.h"
#include "data/image/encoded_images.h"

namespace sb {

// Asks the kernel to drop `path`'s cached pages, after writing back its dirty ones where asked (the
// kernel keeps dirty pages); false when it could not be opened or refused.
bool drop_cached_pages(const std::string& path, bool write_back_first = false);

// What the probe found, as the output's line says it.
struct ColdCacheCheck {
  bool held = false;
  std::string line;  // "dropped after each read (fadvise)" or "not defeated (...why...)"
};
// Reads `path` whole, drops its pages and counts those still resident.
ColdCacheCheck check_cold_cache(const std::string& path);

// Drops the pages of every file that holds a sample i with i % ranks == rank: a cold first touch.
void drop_files_of_rank(const EncodedImages& images, int ranks, int rank);

// A BatchSource that drops the pages of the files it has just read: `inner` builds the rows, then the
// files of those rows lose their cached pages, so that the next epoch reads them from the storage.
std::unique_ptr<BatchSource> dropping_pages_after_reads(const BatchSource& inner, const EncodedImages& images);

}  // namespace sb
