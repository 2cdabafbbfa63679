"""kolo: data-parallel training over MPI, in the family of Horovod. See kolo.torch."""
