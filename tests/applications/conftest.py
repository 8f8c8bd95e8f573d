import pytest


@pytest.fixture(params=["gmlp", "mixer"])
def family(request):
    """Both timm families of tests/fixtures/make_timm_fixtures.py."""
    return request.param
