"""Placeholder: being written."""


def broadcast_parameters(params, root_rank, process_set=None):
    raise NotImplementedError


broadcast_optimizer_state = broadcast_object = allgather_object = broadcast_parameters
