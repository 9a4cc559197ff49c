"""The Celery side: the app and its settings, thin tasks, the dispatcher, the beat schedule."""
