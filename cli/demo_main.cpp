// Placeholder demo entry point (replaced by the training demo).
#include "framework/backend/parallel.h"
int main() { return rota::backend::init_runtime() > 0 ? 0 : 1; }
