/* A ring with a known amount of traffic, for the timeline tests: each of `rounds` rounds every rank
 * sends one message of `bytes` bytes (tag 3) to rank+1 and receives one from rank-1, blocking
 * (even ranks send first, odd ranks receive first); with "nonblocking" the receive is an MPI_Irecv
 * posted before the send and completed by MPI_Wait. Each rank prints one deterministic line.
 * Usage: mpi_ring [rounds] [bytes] [blocking|nonblocking] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int rounds = argc > 1 ? atoi(argv[1]) : 25;
  int bytes = argc > 2 ? atoi(argv[2]) : 8192;
  int nonblocking = argc > 3 && strcmp(argv[3], "nonblocking") == 0;
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  char* out = malloc((size_t)bytes);
  char* in = malloc((size_t)bytes);
  long sum = 0;
  for (int r = 0; r < rounds; ++r) {
    memset(out, (rank + r) & 0xff, (size_t)bytes);
    if (nonblocking) {
      MPI_Request req;
      MPI_Irecv(in, bytes, MPI_CHAR, left, 3, MPI_COMM_WORLD, &req);
      MPI_Send(out, bytes, MPI_CHAR, right, 3, MPI_COMM_WORLD);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else if (rank % 2 == 0) {
      MPI_Send(out, bytes, MPI_CHAR, right, 3, MPI_COMM_WORLD);
      MPI_Recv(in, bytes, MPI_CHAR, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(in, bytes, MPI_CHAR, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(out, bytes, MPI_CHAR, right, 3, MPI_COMM_WORLD);
    }
    sum += (unsigned char)in[bytes - 1];
  }
  printf("rank %d of %d: %d rounds of %d bytes, checksum %ld\n", rank, size, rounds, bytes, sum);
  free(out);
  free(in);
  MPI_Finalize();
  return 0;
}
