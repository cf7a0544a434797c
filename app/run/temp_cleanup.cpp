// Removing the scratch directories of dead rota processes (see temp_cleanup.h).
#include "app/run/temp_cleanup.h"

#include "app/setup/tokenizer_setup.h"
#include "data/prepared/tokenizer_digest.h"
#include "framework/base/scratch_directory.h"
#include "framework/io/log.h"

namespace rota::app {

void remove_stale_temporary_directories() {
  for (const char* prefix : {kTokenizerScratchPrefix, data::kTokenizerDigestScratchPrefix}) {
    const int removed = remove_stale_scratch_directories(prefix);
    if (removed > 0) {
      io::log_debug("removed {} stale {}-PID-N scratch director{} of exited processes", removed,
                    prefix, removed == 1 ? "y" : "ies");
    }
  }
}

}  // namespace rota::app
