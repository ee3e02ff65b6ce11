from typing import Literal

ListWorkloadsStateItem = Literal['running', 'terminating']

LIST_WORKLOADS_STATE_ITEM_VALUES: set[ListWorkloadsStateItem] = { 'running', 'terminating',  }

def check_list_workloads_state_item(value: str) -> ListWorkloadsStateItem:
    if value in LIST_WORKLOADS_STATE_ITEM_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {LIST_WORKLOADS_STATE_ITEM_VALUES!r}")
