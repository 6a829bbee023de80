"""Draw engine, record, MQTT, web and the `ballreader` command; the one place where parts are wired."""
