"""What a run reports: request/step frames and summary metrics (`metrics`), the files it writes
(`outputs`), plots (`plots`) and the Perfetto timeline (`timeline`)."""
