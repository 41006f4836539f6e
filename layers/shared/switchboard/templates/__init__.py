"""Message templates of the Cloud API numbers' business accounts: listed, cached, checked."""
