"""The examples in the client's docstrings run."""

import doctest

import pytest

import urban_client.api
import urban_client.client
import urban_client.cli
import urban_client.config
import urban_client.render


@pytest.mark.parametrize(
    "module",
    [urban_client.api, urban_client.client, urban_client.cli, urban_client.config, urban_client.render],
)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
