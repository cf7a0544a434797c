// The scratch directories killed rota processes leave under $TMPDIR, removed at the next start.
#pragma once

namespace rota::app {

/// Removes $TMPDIR's (else /tmp's) rota-tokenizer-PID-N and rota-digest-PID-N directories whose
/// process no longer exists (a run killed while it saved a tokenizer); see
/// remove_stale_scratch_directories in framework/base/scratch_directory.h for what is never
/// touched. `rota train` (and the Python bindings' training) and `rota data prepare` call it
/// when they start. Never throws; logs what it removed at debug level.
void remove_stale_temporary_directories();

}  // namespace rota::app
