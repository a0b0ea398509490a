import band_trio


def test_error_root_is_exported() -> None:
    assert issubclass(band_trio.RateLimitError, band_trio.BandError)
    assert band_trio.RateLimitError(429).retryable
    assert band_trio.errors.NotFoundError(404).terminal
