// placeholder, replaced by the real suite
