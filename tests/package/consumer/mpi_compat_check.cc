// Compiles only if kolo/kolo.h alone, with MPI's headers on the include path, declares
// kolo::init(MPI_Comm) as well as kolo::init(): the compatibility kolo.h keeps until
// the next release (a program should include kolo/kolo_mpi.h for it).
#include <kolo/kolo.h>

void (*const init_on_world)() = &kolo::init;
void (*const init_on_comm)(MPI_Comm) = &kolo::init;
