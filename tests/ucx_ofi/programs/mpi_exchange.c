/* An MPI program with a known amount of point-to-point traffic, for the ucx/ofi provider tests:
 * rank 0 sends `count` messages of `bytes` bytes (tag 7) to rank 1 and waits for one 8-byte reply
 * (tag 9). Each rank prints one deterministic line. Usage: mpi_exchange [count] [bytes] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int count = argc > 1 ? atoi(argv[1]) : 100;
  int bytes = argc > 2 ? atoi(argv[2]) : 256;
  char* buf = malloc((size_t)bytes);
  long sum = 0;
  if (rank == 0) {
    for (int i = 0; i < count; ++i) {
      memset(buf, i & 0xff, (size_t)bytes);
      MPI_Send(buf, bytes, MPI_CHAR, 1, 7, MPI_COMM_WORLD);
    }
    long reply = 0;
    MPI_Recv(&reply, 1, MPI_LONG, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    sum = reply;
  } else if (rank == 1) {
    for (int i = 0; i < count; ++i) {
      MPI_Recv(buf, bytes, MPI_CHAR, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      sum += (unsigned char)buf[bytes - 1];
    }
    MPI_Send(&sum, 1, MPI_LONG, 0, 9, MPI_COMM_WORLD);
  }
  printf("rank %d of %d: %d messages of %d bytes, checksum %ld\n", rank, size, count, bytes, sum);
  free(buf);
  MPI_Finalize();
  return 0;
}
